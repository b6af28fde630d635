"""``node_count`` holds the asked count now (0011): named so, and ``nodes_requested`` goes.

Apart from 0011 so that the data is moved in a transaction of its own before the table's
columns change."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("jobs", "0011_nodes_asked_and_granted")]

    operations = [
        migrations.RemoveField(model_name="job", name="nodes_requested"),
        migrations.RenameField(model_name="job", old_name="node_count", new_name="nodes_asked"),
        migrations.AlterField(
            model_name="job",
            name="nodes_asked",
            field=models.PositiveSmallIntegerField(default=1, verbose_name="nodes asked for"),
        ),
    ]
