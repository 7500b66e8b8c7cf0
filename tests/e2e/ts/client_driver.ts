// Drives examples/typescript/fulltime_client.ts as a library, for test_examples_ts.py:
//
//   client_driver.js URL TOKEN busy      20 placements at once on one connection (the engine
//                                        allows one in flight: the others are answered busy)
//   client_driver.js URL TOKEN inflight  connects, then places one bet once stdin says "place"
//                                        (the test has stopped the engine: the bet goes out
//                                        and is not answered before the connection is lost)
//
// Prints one JSON object per line: what it did, as the test reads it.

import { createInterface } from "readline";
import { BetClient } from "../../../examples/typescript/fulltime_client";
import { stringifyJson } from "../../../examples/typescript/json64";

function show(message: unknown): void {
  process.stdout.write(stringifyJson(message) + "\n");
}

async function busy(url: string, token: string): Promise<void> {
  const client = await BetClient.connect(url, token);
  try {
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      client.place(2001n, "1.00", "2.00", { idempotencyKey: `b${i}` })));
    show({ bet_ids: replies.map((r) => r.bet.bet_id), busy_retries: client.busyRetries });
  } finally {
    await client.close();
  }
}

async function inflight(url: string, token: string): Promise<void> {
  const client = await BetClient.connect(url, token, { onConnect: (n) => show({ connection: n }) });
  try {
    const stdin = createInterface({ input: process.stdin });
    await new Promise<void>((resolve) => stdin.once("line", () => resolve()));
    stdin.close();
    const placing = client.place(2001n, "1.00", "2.00", { idempotencyKey: "lost-with-its-connection" });
    show({ placing: true }); // sent: place() writes before its first await
    show({ placed: await placing, resent: client.resent });
  } finally {
    await client.close();
  }
}

const [url, token, mode] = process.argv.slice(2);
(mode === "busy" ? busy : inflight)(url, token).catch((error: Error) => {
  process.stderr.write(`client_driver: ${error.stack ?? error.message}\n`);
  process.exitCode = 1;
});
