"""Project wiring: the ingestion entry point, the API router, the site shell, role setup."""
