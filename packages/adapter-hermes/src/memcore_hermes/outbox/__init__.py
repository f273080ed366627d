"""outbox."""
