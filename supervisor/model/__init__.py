"""The pure model at the bottom of the house: config, manifests, discovery, policy, the reload
plan. It imports nothing of actors/, web/ or the process modules above it."""
