import os

from django.core.wsgi import get_wsgi_application

from wirecat.paths import umask_private

umask_private()  # also when gunicorn is started by hand, not by `wirecat start`
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")
application = get_wsgi_application()
