// A bet client for Fulltime's WebSocket protocol (docs/protocol.md), written as a client that is
// not part of the engine would be: it knows only the wire contract. The TypeScript twin of
// examples/python/fulltime_client.py.
//
// What a careful client does, and this one does:
// - every request carries an `id`, and replies are matched by it (they come in completion order);
// - a placement carries an `idempotency_key` chosen before the first attempt, and `busy` or a
//   lost connection is retried with the same key, so a retry can never place a second bet;
// - the connection is opened again after it drops, with a growing pause, and what was in flight
//   is sent again (a `place` with its key, reads as they are);
// - pushed `bet_settled` messages are handed to the caller, who must treat them as idempotent by
//   (bet_id, version): they are at least once;
// - money and odds are decimal strings end to end, never a JavaScript number;
// - ids are 64-bit: every JSON integer is read as a `bigint` (json64.ts), so an id above 2^53
//   is never rounded to another bet's or selection's.
//
// Uses Node.js and ws (Debian: node-ws; run with NODE_PATH=/usr/share/nodejs).

import { randomUUID } from "crypto";
import WebSocket = require("ws");
import { Json, parseJson, stringifyJson } from "./json64";

/** Pauses between connection attempts, then the last one again (milliseconds). */
export const RECONNECT_DELAYS_MS = [100, 250, 500, 1000, 2000, 5000];
/** Pauses between retries of a request answered `busy`, then the last one again. */
export const BUSY_DELAYS_MS = [50, 100, 200, 500, 1000];
/** A connection with no pong for this long is taken as lost (a peer that vanished sends no
 *  close); Python's websockets does the same by default. */
const PING_INTERVAL_MS = 20_000;

/** An id on the wire: a JSON integer of up to 64 bits. */
export type Id = bigint;
/** Money ("10.00") and odds ("2.50"): decimal strings, as on the wire. */
export type Decimal = string;
export type Accept = "exact" | "better" | "any";
export type BetStatus = "open" | "settled" | "all";
export type Outcome = "won" | "lost" | "void" | "half_won" | "half_lost" | "dead_heat";

export interface Bet {
  bet_id: Id;
  account_id: Id;
  market_id: Id;
  selection_id: Id;
  stake: Decimal;
  odds: Decimal;
  placed_at: string;
  currency?: string; // in `bets` lines
  status?: "open" | "settled"; // in `bets` lines
  version?: bigint; // settled lines: the effective settlement
  outcome?: Outcome;
  payout?: Decimal;
}

export interface Placed {
  type: "placed";
  id: string;
  replayed: boolean;
  bet: Bet;
  balance: { available: Decimal; reserved: Decimal };
}

export interface Rejected {
  type: "rejected";
  id: string;
  code: string;
  message: string;
  replayed?: boolean; // present exactly for the codes stored on the key
  retry_after_ms?: bigint; // on `busy`: the least wait before the retry
}

export interface ErrorReply {
  type: "error";
  id: string | bigint | null;
  code: string;
  message: string;
}

export interface BalanceReply {
  type: "balance";
  id: string;
  available: Decimal;
  reserved: Decimal;
  currency: string;
}

export interface BetsReply {
  type: "bets";
  id: string;
  bets: Bet[];
  next_before?: Id | null;
}

export interface BetSettled {
  type: "bet_settled";
  bet_id: Id;
  version: bigint;
  outcome: Outcome;
  payout: Decimal;
}

export type Reply = Placed | Rejected | ErrorReply | BalanceReply | BetsReply;

/** A request as sent, without its `id` (the client gives each attempt one). */
export type Request = { type: string; [field: string]: Json | undefined };

/** The engine refused the request (a `rejected` reply or an `error`); `.reply` holds it. */
export class Refused extends Error {
  constructor(readonly reply: Rejected | ErrorReply) {
    super(`${reply.code}: ${reply.message}`);
    this.name = "Refused";
  }
}

/** The connection could not be made (and retrying will not help, or did not), or a request
 *  found no answer within the client's `giveUpAfterMs`. */
export class Unavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = "Unavailable";
  }
}

export interface BetClientOptions {
  /** Called for every pushed `bet_settled`; treat them as idempotent by (bet_id, version). */
  onPush?: (push: BetSettled) => void;
  /** Called after each connection is made (n = 1, 2, ...): pushes reach connected clients
   *  only, so a client that reconnects reads what it may have missed with `bets`. */
  onConnect?: (n: number) => void;
  /** How long a request may take, busy retries and reconnections included (default 60 s). */
  giveUpAfterMs?: number;
}

interface Waiting {
  message: Request & { id: string };
  resolve: (reply: Reply) => void;
  reject: (error: Error) => void;
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** One bettor's connection to `/v1/bets`:
 *
 *    const client = await BetClient.connect(url, token, { onPush: (p) => ... });
 *    try { ... await client.place(1001n, "10.00", "2.50") ... } finally { await client.close(); }
 *
 *  `busyRetries` counts requests sent again after `busy`; `resent` counts requests sent again
 *  on a new connection because the old one was lost before their reply. */
export class BetClient {
  busyRetries = 0;
  resent = 0;
  private connections = 0;
  private nextId = 1;
  private readonly waiting = new Map<string, Waiting>();
  private ws: WebSocket | null = null; // the open connection; null while there is none
  private attempt: WebSocket | null = null; // a connection being made
  private closing = false;
  private failed: Error | null = null; // set when reconnecting gave up
  private pinger: TimerHandle | undefined;
  private readonly giveUpAfterMs: number;

  private constructor(
    readonly url: string,
    private readonly token: string,
    private readonly options: BetClientOptions,
  ) {
    this.giveUpAfterMs = options.giveUpAfterMs ?? 60_000;
  }

  /** Connects (retrying as after a lost connection) and returns the client. */
  static async connect(url: string, token: string, options: BetClientOptions = {}): Promise<BetClient> {
    const client = new BetClient(url, token, options);
    await client.connectWithRetries();
    return client;
  }

  /** Closes the connection; requests still waiting are rejected. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.pinger);
    this.attempt?.terminate();
    this.failWaiting(new Unavailable("the client was closed"));
    const ws = this.ws;
    this.ws = null;
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        ws.on("close", () => resolve());
        ws.close(1000);
      });
    }
  }

  /** Places a bet; returns the `placed` reply (`replayed` true when the key had placed it
   *  already). `stake` and `odds` are decimal strings ("10.00", "2.50"). Retries `busy` and
   *  lost connections with the same key; throws Refused for a `rejected` reply. */
  async place(selectionId: Id, stake: Decimal, odds: Decimal,
              options: { idempotencyKey?: string; accept?: Accept } = {}): Promise<Placed> {
    // Checked at run time too, for callers in JavaScript: a number here would be rounded
    // (an id) or binary floating point (money).
    if (typeof selectionId !== "bigint") throw new TypeError("selectionId must be a bigint");
    if (typeof stake !== "string" || typeof odds !== "string") {
      throw new TypeError("stake and odds must be decimal strings, such as \"10.00\"");
    }
    const reply = await this.request({
      type: "place",
      idempotency_key: options.idempotencyKey ?? randomUUID(),
      selection_id: selectionId,
      stake,
      odds,
      accept: options.accept,
    });
    if (reply.type !== "placed") throw new Refused(reply as Rejected);
    return reply;
  }

  /** Returns the `balance` reply: available, reserved, currency. */
  async balance(): Promise<BalanceReply> {
    return (await this.request({ type: "balance" })) as BalanceReply;
  }

  /** Yields the account's bets, newest first, page by page (`next_before`). */
  async *bets(status: BetStatus = "all", pageSize = 50): AsyncGenerator<Bet> {
    let before: Id | null = null;
    for (;;) {
      const reply = (await this.request({
        type: "bets", status, limit: pageSize, before: before ?? undefined,
      })) as BetsReply;
      for (const bet of reply.bets) yield bet;
      before = reply.next_before ?? null;
      if (before === null) return;
    }
  }

  /** Sends `message` with a fresh `id` and returns its reply. `busy` is retried (with the same
   *  message, so a placement keeps its key); an `error` throws Refused. */
  async request(message: Request): Promise<Reply> {
    const deadline = Date.now() + this.giveUpAfterMs;
    for (let attempt = 0; ; attempt++) {
      const reply = await this.sendAndWait({ ...message, id: `r${this.nextId++}` }, deadline);
      if (reply.type === "error") throw new Refused(reply);
      if (reply.type === "rejected" && reply.code === "busy") {
        this.busyRetries++;
        // The engine's hint (retry_after_ms) is the least wait; back off beyond it.
        const hint = Number(reply.retry_after_ms ?? 0n);
        await delay(Math.max(hint, BUSY_DELAYS_MS[Math.min(attempt, BUSY_DELAYS_MS.length - 1)]));
        continue;
      }
      return reply;
    }
  }

  private sendAndWait(message: Request & { id: string }, deadline: number): Promise<Reply> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.closing) return Promise.reject(new Unavailable("the client was closed"));
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(message.id);
        reject(new Unavailable(`no reply to ${message.type} within ${this.giveUpAfterMs} ms`));
      }, Math.max(deadline - Date.now(), 1));
      this.waiting.set(message.id, {
        message,
        resolve: (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      // Without a connection it goes out when the next one is made, with the others waiting.
      if (this.ws) this.send(this.ws, message);
    });
  }

  private send(ws: WebSocket, message: Request): void {
    // A failed send needs no handling here: the connection is lost, its "close" follows, and
    // every request still waiting is sent again on the next connection.
    ws.send(stringifyJson(message), () => undefined);
  }

  private async connectWithRetries(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.open();
        return;
      } catch (error) {
        const fatal = error instanceof Unavailable; // refused by the engine: retrying won't help
        if (this.closing) return;
        if (fatal || attempt >= RECONNECT_DELAYS_MS.length * 3) throw error;
        await delay(RECONNECT_DELAYS_MS[Math.min(attempt, RECONNECT_DELAYS_MS.length - 1)]);
        if (this.closing) return;
      }
    }
  }

  /** One attempt: resolves once the connection is open and in use, rejects with why there is
   *  none (an Unavailable when the engine refused the token, which no retry changes). */
  private open(): Promise<void> {
    return new Promise((resolve, reject) => {
      // The token in a header, not the URL: URLs end up in proxies' logs.
      const ws = new WebSocket(this.url, {
        headers: { Authorization: "Bearer " + this.token },
        handshakeTimeout: 10_000,
      });
      this.attempt = ws;
      let refusedWith: number | undefined;
      ws.on("unexpected-response", (_request, response) => {
        refusedWith = response.statusCode;
        ws.terminate();
      });
      ws.on("open", () => {
        this.attempt = null;
        // Now, not after a promise's turn: the engine may push at once (the settlements made
        // while this client was away), and a frame with no listener yet would be lost.
        this.opened(ws);
        resolve();
      });
      // Before "open", why the attempt failed; after it, an error is followed by "close",
      // which lost() handles (and this listener keeps the error from being unhandled).
      ws.on("error", (error) => {
        if (this.attempt === ws) this.attempt = null;
        reject(refusedWith === 401 || refusedWith === 403
          ? new Unavailable(`${this.url}: the engine refused the token (HTTP ${refusedWith})`)
          : error);
      });
    });
  }

  private opened(ws: WebSocket): void {
    if (this.closing) {
      ws.terminate();
      return;
    }
    ws.on("message", (data, isBinary) => this.received(ws, data, isBinary));
    ws.on("close", () => this.lost(ws));
    let alive = true;
    ws.on("pong", () => {
      alive = true;
    });
    clearInterval(this.pinger);
    this.pinger = setInterval(() => {
      if (!alive) {
        ws.terminate(); // "close" follows
        return;
      }
      alive = false;
      ws.ping();
    }, PING_INTERVAL_MS);
    this.ws = ws;
    this.connections++;
    this.options.onConnect?.(this.connections);
    // What was in flight on the lost connection, and what was asked for without one. A
    // placement sent again with its key either places its bet or replays the one placed
    // before the loss.
    for (const waiting of this.waiting.values()) {
      if (this.connections > 1) this.resent++;
      this.send(ws, waiting.message);
    }
  }

  private lost(ws: WebSocket): void {
    if (this.ws !== ws) return;
    this.ws = null;
    clearInterval(this.pinger);
    if (this.closing) return;
    this.connectWithRetries().catch((error: Error) => {
      this.failed = error;
      this.failWaiting(error);
    });
  }

  private received(ws: WebSocket, data: WebSocket.RawData, isBinary: boolean): void {
    let message: Json;
    try {
      if (isBinary) throw new SyntaxError("a binary frame");
      message = parseJson(data.toString("utf8"));
    } catch {
      ws.terminate(); // not the protocol: start again on a new connection
      return;
    }
    if (typeof message !== "object" || message === null || Array.isArray(message)) return;
    if (message.type === "bet_settled") {
      this.options.onPush?.(message as unknown as BetSettled);
      return;
    }
    const id = message.id;
    const waiting = typeof id === "string" ? this.waiting.get(id) : undefined;
    if (waiting) {
      this.waiting.delete(waiting.message.id);
      waiting.resolve(message as unknown as Reply);
    }
  }

  private failWaiting(error: Error): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of waiting) w.reject(error);
  }
}
