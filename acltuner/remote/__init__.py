"""Boards over SSH: the user's own OpenSSH client (ssh.py), putting a board's
launcher on it (deploy.py) and measuring through it (launcher.py)."""
