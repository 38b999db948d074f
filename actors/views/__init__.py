"""The app views open in browsers, as an actor: `ViewHub` (hub.py) owns the views' leases, the
calls held for the person's approval, the apps' questions waiting for a page and the counters;
the front door (web/views/) only turns HTTP into the hub's messages (messages.py) and the hub's
events back into answers."""
