// Replaced in every per-launch copy of this folder by the harness (web_bench/browser/extension_backend.py):
// the loopback port of the bridge and the token the hello must carry. null here: no bridge to reach.
self.FARM_BRIDGE = null;
