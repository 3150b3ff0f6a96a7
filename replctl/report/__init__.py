"""The HTML report page (`replctl report --html`): `page` turns the report document into what the Jinja2
templates in `templates/` draw; `geometry` places the topology drawing."""
