"""Graph generators and input sampling."""
