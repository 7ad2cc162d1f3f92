"""Other annotation tools' files in and out: a Label Studio JSON export or a Potato annotation output
folder imported into a study (items and ratings, mapped onto the study's rubric), and a study's items
with its judge scores exported as Label Studio tasks with predictions.

    mapping   the user's mapping file: which task field is the context, which are the outputs, which
              control (LS) or scheme (Potato) answers which criterion for which response (pure)
    readers   the peers' files -> PeerAnnotation records, every problem named by task/file and field (pure)
    services  peer_import: validate everything, then store items and ratings through the workspace's
              own services in one transaction; peer_import_new_study: the same into a study it creates
    label_studio_export  a study's items and judge scores as Label Studio tasks and a labeling config
"""
