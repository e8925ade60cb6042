"""Device drivers: the shoe, the dealer console and the bet-sensor board.

Drivers know devices, not the game, and import nothing else of this project.
``errors`` is every driver error, sorted by what the caller can do;
``backoff`` the one capped, jittered reconnect delay (the service's publisher
uses it too); ``lifecycle`` the async context manager every client is;
``transport`` a byte link on any pyserial URL; ``lineframe`` the line framing
of the shoe (``shoe``) and the console (``console``); ``sensors`` the USB board.
"""
