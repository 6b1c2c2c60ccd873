"""Host-side code that drives headless Chromium running Pyodide (needs Playwright).

Submodules are imported explicitly (config, dist, server, session) so that importing
this package stays cheap and does not need Playwright, e.g. inside Pyodide.
"""
