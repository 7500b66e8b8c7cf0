"""The catalog and results the end-to-end scenarios share: a final (market 100, home and away)
with its home win, and another market (200) that stays open while 100 settles."""

MARKET = {"type": "market", "market_id": 100, "event_id": 10, "name": "Final: winner",
          "status": "open",
          "selections": [{"selection_id": 1001, "name": "Home", "odds": "2.50"},
                         {"selection_id": 1002, "name": "Away", "odds": "3.10"}]}
OTHER_MARKET = {"type": "market", "market_id": 200, "event_id": 20, "name": "Another match",
                "status": "open",
                "selections": [{"selection_id": 2001, "name": "Home", "odds": "2.00"}]}
HOME_WINS = {"type": "result", "market_id": 100, "seq": 1, "event_key": "final-r1",
             "outcomes": [{"selection_id": 1001, "result": "win"},
                          {"selection_id": 1002, "result": "lose"}]}
