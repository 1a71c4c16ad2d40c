"""Built-in group chat manager."""
