"""Small pieces shared by the apps (domain errors). Not a Django app."""
