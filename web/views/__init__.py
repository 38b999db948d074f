"""The front door of the app views: `/apps/views…` turned into the view hub's messages
(actors/views/), and the hub's answers into JSON-RPC answers and server-sent events."""
