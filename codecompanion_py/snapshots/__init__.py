"""Snapshots of the project, shared by the code review's baseline and the chat's checkpoints."""
