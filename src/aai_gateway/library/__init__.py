"""The library: curated descriptors of real apps, shipped with the package.

Each entry is a folder `apps/<appId>/` holding `aai.json` (an ordinary descriptor whose appId is the
folder name) and `entry.json` (what the library knows beyond the descriptor: how the entry was
verified, how to tell the app is present on this machine, why a user wants it).
"""
