"""Framework plugins, as DALI's ``nvidia.dali.plugin``: ``augkit.plugin.pytorch``."""
