"""`farm sweep`: a nightly sweep across every phone of every farm host."""
