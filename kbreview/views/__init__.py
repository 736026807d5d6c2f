"""The console's shell (the dashboard, switching knowledge base) and what every app's views share."""
