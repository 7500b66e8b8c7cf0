#!/usr/bin/env node
// Fulltime's example bet client on the command line, in TypeScript (fulltime_client.ts is the
// library); the same commands, options, output and exit codes as examples/python/bet.py.

import { Accept, BetClient, BetStatus, Refused } from "./fulltime_client";
import { stringifyJson } from "./json64";

const USAGE = `usage: bet.js [--url URL] [--token T] COMMAND [options]

  bet.js place --selection 1001 --stake 10.00 --odds 2.50 [--key K] [--accept exact|better|any]
  bet.js balance
  bet.js bets [--status open|settled|all] [--page-size N]
  bet.js watch [--count N]      print bet_settled pushes (N of them, or until Ctrl-C),
                                and {"connection":n,"watching":true} on each connect

The token is a bet-client token (\`fulltime token account ID\`), or BET_TOKEN (not a FULLTIME_*
name: \`fulltime\` refuses FULLTIME_* variables it does not know, to catch a misspelt setting).
The engine's bettors' address is --url (default ws://127.0.0.1:8080/v1/bets). Prints one JSON
object per line, ids as exact JSON integers. Exits 0 on success, 1 when the engine refused (the
reply is printed), 2 on bad usage.
`;

class UsageError extends Error {}
const HELP = Symbol("help");

interface Args {
  url: string;
  token: string;
  command: "place" | "balance" | "bets" | "watch";
  options: Map<string, string>;
}

// Each command's options; a value of null means "any string".
const COMMANDS: { [command: string]: { [option: string]: readonly string[] | null } } = {
  place: { selection: null, stake: null, odds: null, key: null, accept: ["exact", "better", "any"] },
  balance: {},
  bets: { status: ["open", "settled", "all"], "page-size": null },
  watch: { count: null },
};
const REQUIRED: { [command: string]: string[] } = { place: ["selection", "stake", "odds"] };
const INTEGERS = ["selection", "page-size", "count"];
// Own keys only: `"constructor" in {}` is true.
const has = (object: object, key: string) => Object.prototype.hasOwnProperty.call(object, key);

function parse(argv: string[]): Args | typeof HELP {
  const global = new Map<string, string>();
  const options = new Map<string, string>();
  let command: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i];
    if (word === "-h" || word === "--help") return HELP;
    if (!word.startsWith("--")) {
      if (command !== undefined) throw new UsageError(`unexpected argument: ${word}`);
      if (!has(COMMANDS, word)) throw new UsageError(`unknown command: ${word}`);
      command = word;
      continue;
    }
    const equals = word.indexOf("=");
    const name = word.slice(2, equals < 0 ? undefined : equals);
    const value = equals < 0 ? argv[++i] : word.slice(equals + 1);
    const allowed = command === undefined ? { url: null, token: null } : COMMANDS[command];
    if (!has(allowed, name)) throw new UsageError(`unknown option: --${name}`);
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    const choices = allowed[name];
    if (choices && !choices.includes(value)) {
      throw new UsageError(`--${name} must be one of ${choices.join(", ")}`);
    }
    if (INTEGERS.includes(name) && !/^-?[0-9]+$/.test(value)) {
      throw new UsageError(`--${name} must be an integer`);
    }
    (command === undefined ? global : options).set(name, value);
  }
  if (command === undefined) throw new UsageError("give a command: place, balance, bets or watch");
  for (const name of REQUIRED[command] ?? []) {
    if (!options.has(name)) throw new UsageError(`${command} needs --${name}`);
  }
  const token = global.get("token") ?? process.env.BET_TOKEN;
  if (!token) throw new UsageError("give --token or set BET_TOKEN (fulltime token account ID)");
  return {
    url: global.get("url") ?? "ws://127.0.0.1:8080/v1/bets",
    token,
    command: command as Args["command"],
    options,
  };
}

/** An integer option, as a bigint: exact at any size (a selection id may be above 2^53). */
function integer(args: Args, name: string): bigint | undefined {
  const text = args.options.get(name);
  return text === undefined ? undefined : BigInt(text);
}

function show(message: unknown): void {
  process.stdout.write(stringifyJson(message, true) + "\n");
}

async function run(args: Args): Promise<void> {
  // watch says when it is connected (again, after a loss): pushes reach connected clients.
  let stop = (): void => undefined;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  const count = integer(args, "count");
  let seen = 0n;
  const watching = args.command === "watch";
  const client = await BetClient.connect(args.url, args.token, watching ? {
    onConnect: (n) => show({ watching: true, connection: n }),
    onPush: (push) => {
      if (count !== undefined && seen >= count) return;
      show(push);
      if (++seen === count) stop();
    },
  } : {});
  try {
    switch (args.command) {
      case "place":
        show(await client.place(integer(args, "selection") as bigint,
          args.options.get("stake") as string, args.options.get("odds") as string, {
            idempotencyKey: args.options.get("key"),
            accept: args.options.get("accept") as Accept | undefined,
          }));
        break;
      case "balance":
        show(await client.balance());
        break;
      case "bets":
        for await (const bet of client.bets((args.options.get("status") ?? "all") as BetStatus,
          Number(integer(args, "page-size") ?? 50n))) {
          show(bet);
        }
        break;
      case "watch":
        if (count !== undefined && count <= 0n) break;
        process.once("SIGINT", stop); // Ctrl-C: stop watching, exit 0
        process.once("SIGTERM", stop);
        await stopped;
        break;
    }
  } finally {
    process.removeAllListeners("SIGINT");
    process.removeAllListeners("SIGTERM");
    await client.close();
  }
}

async function main(argv: string[]): Promise<number> {
  let args: Args | typeof HELP;
  try {
    args = parse(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`${USAGE}\nbet.js: error: ${error.message}\n`);
    return 2;
  }
  if (args === HELP) {
    process.stdout.write(USAGE);
    return 0;
  }
  try {
    await run(args);
    return 0;
  } catch (error) {
    if (error instanceof Refused) {
      show(error.reply);
      return 1;
    }
    process.stderr.write(`bet.js: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

// No process.exit(): output to a pipe is written asynchronously, and node exits once it is.
main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
