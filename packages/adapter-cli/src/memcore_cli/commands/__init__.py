"""The CLI commands, one module per family; each imports its heavy dependencies lazily."""
