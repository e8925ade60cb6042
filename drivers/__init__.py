"""Device drivers: the shoe, the dealer console and the bet-sensor board.

Drivers know devices, not the game, and import nothing else of this project.
"""
