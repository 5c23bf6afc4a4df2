"""Local development: `make run`. DEBUG on by default; an insecure key only while it is."""

from config.env import env_bool, require_secret_key
from config.settings.base import *  # noqa: F403
from config.settings.base import SECRET_KEY

DEBUG = env_bool("DEBUG", True)
SECRET_KEY = require_secret_key(debug=DEBUG, key=SECRET_KEY) or "dev-only-insecure-key"
WHITENOISE_USE_FINDERS = True
