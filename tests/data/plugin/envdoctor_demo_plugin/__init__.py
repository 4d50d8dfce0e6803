"""A third-party envdoctor plugin, as a lab would ship one for its own cluster rules."""
