"""Makes the migrated template database that the pg and e2e tests copy instead of migrating
their own (CREATE DATABASE ... TEMPLATE is a file copy; migrating is about a second of work on
the test server each time). CTest runs this once per run, before every test labelled `pg`
(the fixture `pg_template` in tests/CMakeLists.txt).

The template is made anew each run, by the engine's own `fulltime migrate` with the default
configuration, so it holds exactly what a first migration makes (the default history period,
its periods ahead of now). A test that wants another history period, or an empty database,
does not use it (tests/support/pg_support.hpp, harness.scratch_database)."""

import sys

import psycopg

from harness import TEMPLATE_DATABASE, admin_sql, engine_env, run_cli, test_database_url


def main():
    owner = psycopg.conninfo.conninfo_to_dict(test_database_url()).get("user")
    exists = admin_sql("SELECT 1 FROM pg_database WHERE datname = %s", TEMPLATE_DATABASE)
    if exists:
        # A template cannot be dropped; one left by an earlier run on this server is replaced.
        admin_sql(f"ALTER DATABASE {TEMPLATE_DATABASE} IS_TEMPLATE false")
        admin_sql(f"DROP DATABASE {TEMPLATE_DATABASE} WITH (FORCE)")
    admin_sql(f"CREATE DATABASE {TEMPLATE_DATABASE} TEMPLATE template0"
              + (f' OWNER "{owner}"' if owner else ""))
    url = psycopg.conninfo.make_conninfo(test_database_url(), dbname=TEMPLATE_DATABASE)
    code, _, err = run_cli(["migrate"], engine_env({"FULLTIME_DATABASE_URL": url}), timeout=120)
    if code != 0:
        print(f"fulltime migrate failed ({code}):\n{err}", file=sys.stderr)
        return 1
    # No connection may stay open to a template while a copy is made of it: none is allowed.
    admin_sql(f"ALTER DATABASE {TEMPLATE_DATABASE} IS_TEMPLATE true ALLOW_CONNECTIONS false")
    print(f"{TEMPLATE_DATABASE}: migrated, ready to copy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
