"""Studies of many games: specs, the resumable runner, executors and result tables."""
