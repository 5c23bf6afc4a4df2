from django.urls import URLPattern, URLResolver

app_name = "web"

urlpatterns: list[URLPattern | URLResolver] = []
