"""What the tests share: projects on disk, a running supervisor, clients, the fake model server."""
