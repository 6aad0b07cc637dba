"""The Retrieval view: a query box, ranked and explained results, the scoreboard."""
