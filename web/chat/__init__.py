"""The chat routes of the front door: a turn as a stream of server-sent events, its history, and
the person's answers to what an app asks during a turn."""
