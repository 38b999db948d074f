"""The workspace over HTTP: its listing, with the app views that open each file."""
