"""The Django building blocks every app shares (the Django app labelled `redteam`)."""
