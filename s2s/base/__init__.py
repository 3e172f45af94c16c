"""The base layer: user-facing errors, files written atomically, package data, plain records, the device lock."""
