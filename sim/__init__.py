"""The simulated HTTP provider: an OpenAI-compatible (and Anthropic Messages, and batch API) server on
127.0.0.1 with scriptable faults, for tests, benches and demos. Not an adapter: nothing in the engine
imports it. `server.SimServerProcess` runs it in a child process; `fairsweep sim-server` from the shell."""
