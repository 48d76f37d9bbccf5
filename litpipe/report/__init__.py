"""What a user reads: a collection's syntheses as Markdown and as one standalone HTML page."""
