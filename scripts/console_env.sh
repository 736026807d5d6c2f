# The run command's environment (sourced by scripts/run_console.sh; the tests source it too).
# The console a user runs behaves like production: no debug pages unless DJANGO_DEBUG=true is asked for
# (in the environment or .env); a local secret key is generated in var/local_secret_key.
# Links in e-mails and webhook payloads point at the address the web server serves, unless
# CONSOLE_BASE_URL says otherwise (e.g. a proxy's public address).
export WEB_PORT="${WEB_PORT:-8000}"
if [ -z "${CONSOLE_BASE_URL:-}" ] && ! grep -qs '^CONSOLE_BASE_URL=' .env; then
  export CONSOLE_BASE_URL="http://127.0.0.1:${WEB_PORT}"
fi
# E-mail (notifications, the digest) is written to files in var/mail, one per message, unless a mail backend
# is configured (SMTP in production).
if [ -z "${EMAIL_BACKEND:-}" ] && ! grep -qs '^EMAIL_BACKEND=' .env; then
  export EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend"
fi
