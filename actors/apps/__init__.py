"""The app side: one app actor per app and what it owns (its incarnations, the process or HTTP
session, the stdio transport, the SDK connection, keep-alive, sign-in, the shared session state),
and supervision as data."""
