"""Production: DEBUG off unless asked, SECRET_KEY mandatory, secure cookies."""

from config.env import env_bool, env_int, require_secret_key
from config.settings.base import *  # noqa: F403
from config.settings.base import SECRET_KEY

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = require_secret_key(debug=DEBUG, key=SECRET_KEY)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
