"""Device drivers tested against their simulators."""
