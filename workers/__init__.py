"""Celery workers: the app, its settings and thin task wrappers over the freshmark core."""
