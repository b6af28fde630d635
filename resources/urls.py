from django.urls import include, path

urlpatterns = [
    path("catalog/", include("resources.catalog_urls")),
]
