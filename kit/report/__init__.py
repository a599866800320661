"""Reports over the store: the data a report shows (`data`), rendered as text (`text`) or HTML (`html`),
and the gate verdict (`gate`)."""
