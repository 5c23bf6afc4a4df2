from django.urls import URLPattern, URLResolver, path

from lti import views

app_name = "lti"

urlpatterns: list[URLPattern | URLResolver] = [
    path("jwks.json", views.jwks, name="jwks"),
    path("login/<uuid:registration_uuid>/", views.LoginView.as_view(), name="login"),
    path("login/", views.LoginView.as_view(), name="login-any"),
    path("launch/", views.LaunchView.as_view(), name="launch"),
    path("deep-link/", views.DeepLinkView.as_view(), name="deep-link"),
]
