from django.urls import path

from ops import views

urlpatterns = [
    path("healthz/live", views.live, name="healthz-live"),
    path("healthz/ready", views.ready, name="healthz-ready"),
    path("metrics", views.metrics, name="metrics"),
]
