"""The process: the root supervisor (`mcpapps run`), the command line, signals, reload, the file
watcher, logs and sd_notify. The top layer: it imports the front door, the actors and the model;
nothing imports it."""
