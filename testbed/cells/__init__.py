"""The cell format every layer shares: header codec, segmentation, flow ports, classifier, PFC frame."""
