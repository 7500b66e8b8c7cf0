#!/usr/bin/python3
"""Fulltime's example bet client on the command line (fulltime_client.py is the library).

  bet.py --token T place --selection 1001 --stake 10.00 --odds 2.50 [--key K] [--accept any]
  bet.py --token T balance
  bet.py --token T bets [--status open|settled|all] [--page-size N]
  bet.py --token T watch [--count N]       print bet_settled pushes (N of them, or until Ctrl-C),
                                           and {"watching":true,"connection":n} on each connect

The token is a bet-client token (`fulltime token account ID`), or BET_TOKEN (not a FULLTIME_*
name: `fulltime` refuses FULLTIME_* variables it does not know, to catch a misspelt setting).
The engine's bettors' address is --url (default ws://127.0.0.1:8080/v1/bets). Prints one JSON
object per line. Exits 0 on success, 1 when the engine refused (the reply is printed), 2 on bad usage."""

import argparse
import asyncio
import json
import os
import sys

from fulltime_client import BetClient, Refused


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="ws://127.0.0.1:8080/v1/bets")
    p.add_argument("--token", default=os.environ.get("BET_TOKEN"))
    commands = p.add_subparsers(dest="command", required=True)
    place = commands.add_parser("place", help="place a bet")
    place.add_argument("--selection", type=int, required=True)
    place.add_argument("--stake", required=True, help='a decimal string, e.g. "10.00"')
    place.add_argument("--odds", required=True, help='a decimal string, e.g. "2.50"')
    place.add_argument("--key", help="the idempotency key (default: a new UUID)")
    place.add_argument("--accept", choices=("exact", "better", "any"))
    commands.add_parser("balance", help="the account's balance")
    bets = commands.add_parser("bets", help="the account's bets, every page")
    bets.add_argument("--status", choices=("open", "settled", "all"), default="all")
    bets.add_argument("--page-size", type=int, default=50)
    watch = commands.add_parser("watch", help="print bet_settled pushes")
    watch.add_argument("--count", type=int, help="stop after this many")
    args = p.parse_args(argv)
    if not args.token:
        p.error("give --token or set BET_TOKEN (fulltime token account ID)")
    return args


def show(message):
    print(json.dumps(message, sort_keys=True), flush=True)


async def run(args):
    # watch says when it is connected (again, after a loss): pushes reach connected clients.
    on_connect = ((lambda n: show({"watching": True, "connection": n}))
                  if args.command == "watch" else None)
    async with BetClient(args.url, args.token, on_connect=on_connect) as client:
        if args.command == "place":
            show(await client.place(args.selection, args.stake, args.odds, args.key, args.accept))
        elif args.command == "balance":
            show(await client.balance())
        elif args.command == "bets":
            async for bet in client.bets(args.status, args.page_size):
                show(bet)
        elif args.command == "watch":
            seen = 0
            while args.count is None or seen < args.count:
                show(await client.pushes.get())
                seen += 1


def main(argv=None):
    args = parse(argv)
    try:
        asyncio.run(run(args))
    except Refused as e:
        show(e.reply)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
