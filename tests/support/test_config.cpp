#include "support/test_config.hpp"

namespace fulltime::test {

config test_config(const std::string& database_url) {
    config cfg;
    cfg.gateway.host = "127.0.0.1";
    cfg.gateway.port = 0;
    cfg.gateway.connections_max = 64;
    cfg.gateway.frame_bytes_max = 65536;
    cfg.gateway.inflight_per_connection_max = 8;
    cfg.gateway.write_queue_bytes_max = 1 << 20;
    cfg.gateway.write_queue_bytes_total_max = 256 << 20;
    cfg.gateway.handshake_timeout_ms = 2000;
    cfg.gateway.idle_timeout_ms = 10000;
    cfg.gateway.shutdown_deadline_ms = 2000;
    cfg.gateway.io_threads = 1;  // the fixture runs one loop

    cfg.database.url = database_url;
    cfg.database.connect_timeout_ms = 2000;
    cfg.database.statement_timeout_ms = 5000;
    cfg.database.query_timeout_ms = 5000;
    set_pools(cfg, pool_settings{4, 256, 5000});

    cfg.actors.scheduler_threads = 2;
    cfg.actors.request_timeout_ms = 5000;

    cfg.placement.actors = 4;
    cfg.placement.group_bets_max = 64;
    cfg.placement.lock_timeout_ms = 50;
    cfg.placement.lock_retries_max = 3;
    cfg.placement.idempotency_retention_s = 86400;
    cfg.placement.purge_batch_max = 1000;
    cfg.placement.purge_interval_ms = 60000;

    cfg.settlement.batch_bets_max = 100;
    cfg.settlement.batches_in_flight = 2;
    cfg.settlement.lanes = 2;
    cfg.settlement.lock_timeout_ms = 200;
    cfg.settlement.retry_delay_ms = 10;
    cfg.settlement.poll_interval_ms = 200;
    cfg.settlement.duty_percent = 100;
    cfg.settlement.push_interval_ms = 50;
    cfg.settlement.push_consumer = "push";
    cfg.settlement.outbox_purge_interval_ms = 10000;
    cfg.settlement.outbox_purge_batch_max = 5000;

    cfg.reservations.grace_s = 600;
    cfg.reservations.default_deadline_s = 86400;
    cfg.reservations.sweep_interval_ms = 100;
    cfg.reservations.sweep_batch_bets_max = 100;

    cfg.reconcile.interval_ms = 0;  // on demand only, unless a test asks otherwise
    cfg.reconcile.chunk_accounts = 1000;
    cfg.reconcile.chunk_transfers = 20000;
    cfg.reconcile.chunk_pause_ms = 0;
    cfg.reconcile.lock_timeout_ms = 1000;
    cfg.reconcile.statement_timeout_ms = 60000;
    cfg.reconcile.run_timeout_ms = 120000;

    cfg.markets.stake_min_minor = 10;
    cfg.markets.stake_max_minor = 100000000;
    cfg.markets.liability_limit_minor = 1000003;
    cfg.markets.exposure_shards = 4;
    return cfg;
}

void set_pools(config& cfg, const pool_settings& settings) {
    for (auto* pool : {&cfg.database.placement, &cfg.database.settlement, &cfg.database.read,
                       &cfg.database.background}) {
        *pool = settings;
    }
}

void use_batch_database(config& cfg) {
    cfg.database.statement_timeout_ms = 60000;
    cfg.database.query_timeout_ms = 60000;
    cfg.database.placement = pool_settings{2, 64, 2000};
    cfg.database.settlement = pool_settings{2, 64, 5000};
    cfg.database.read = pool_settings{1, 64, 2000};
    cfg.database.background = pool_settings{2, 64, 5000};
}

}  // namespace fulltime::test
