"""Credentials for web apps: the secret store, OAuth 2 with PKCE, API keys and bearer tokens."""
