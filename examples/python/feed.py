#!/usr/bin/python3
"""Fulltime's example feed producer: sends catalog and result messages on POST /v1/feed
(docs/protocol-feed.md) with a producer token (`fulltime token producer NAME`, or
FEED_TOKEN), to the operators' address (--url, default http://127.0.0.1:8081; the bettors'
port when the engine has no admin_listen).

  feed.py market --market 100 --event 10 --name "Final" --selection 1001:Home:2.50 ...
  feed.py result --market 100 --seq 1 --key final-r1 --win 1001 [--lose 1002 ...] [--void ...]
  feed.py send FILE              one JSON message per line (- for stdin), sent in order

A result is keyed (`event_key`): sending it again is answered as a duplicate and changes nothing,
so a producer that is unsure whether a message arrived sends it again. A 503 (the engine is busy
or its database unavailable) is retried after its Retry-After. Prints each answer as a JSON line;
exits 0 when every message was accepted, 1 when one was refused, 2 on bad usage."""

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

RETRIES_MAX = 20


def post(url, token, message):
    """POSTs one message; returns (status, answer). Retries 503 after Retry-After (1 s when the
    answer has none)."""
    body = json.dumps(message).encode()
    for _ in range(RETRIES_MAX):
        request = urllib.request.Request(url + "/v1/feed", data=body, method="POST", headers={
            "Authorization": "Bearer " + token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            answer = e.read()
            if e.code != 503:
                return e.code, json.loads(answer) if answer else {}
            time.sleep(float(e.headers.get("Retry-After") or 1))
    return 503, {"code": "unavailable", "detail": f"still unavailable after {RETRIES_MAX} attempts"}


def market_message(args):
    selections = []
    for s in args.selection:
        selection_id, name, odds = s.split(":", 2)
        selections.append({"selection_id": int(selection_id), "name": name, "odds": odds})
    return {"type": "market", "market_id": args.market, "event_id": args.event,
            "name": args.name, "status": args.status, "selections": selections}


def result_message(args):
    outcomes = ([{"selection_id": s, "result": "win"} for s in args.win]
                + [{"selection_id": s, "result": "lose"} for s in args.lose]
                + [{"selection_id": s, "result": "void"} for s in args.void])
    return {"type": "result", "market_id": args.market, "seq": args.seq,
            "event_key": args.key, "outcomes": outcomes}


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8081")
    p.add_argument("--token", default=os.environ.get("FEED_TOKEN"))
    commands = p.add_subparsers(dest="command", required=True)
    market = commands.add_parser("market", help="create or update a market")
    market.add_argument("--market", type=int, required=True)
    market.add_argument("--event", type=int, required=True)
    market.add_argument("--name", required=True)
    market.add_argument("--status", choices=("open", "suspended", "closed"), default="open")
    market.add_argument("--selection", action="append", required=True,
                        help="ID:NAME:ODDS, e.g. 1001:Home:2.50 (repeat for each selection)")
    result = commands.add_parser("result", help="a market's result")
    result.add_argument("--market", type=int, required=True)
    result.add_argument("--seq", type=int, required=True)
    result.add_argument("--key", required=True, help="the event_key")
    for outcome in ("win", "lose", "void"):
        result.add_argument("--" + outcome, type=int, action="append", default=[],
                            metavar="SELECTION")
    send = commands.add_parser("send", help="send JSON messages, one per line")
    send.add_argument("file")
    args = p.parse_args(argv)
    if not args.token:
        p.error("give --token or set FEED_TOKEN (fulltime token producer NAME)")
    return args


def main(argv=None):
    args = parse(argv)
    if args.command == "market":
        messages = [market_message(args)]
    elif args.command == "result":
        messages = [result_message(args)]
    else:
        f = sys.stdin if args.file == "-" else open(args.file)
        with f:
            messages = [json.loads(line) for line in f if line.strip()]
    refused = False
    for message in messages:
        status, answer = post(args.url.rstrip("/"), args.token, message)
        print(json.dumps(answer, sort_keys=True), flush=True)
        refused = refused or status != 200
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
