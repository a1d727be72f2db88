import Prometheus
import Metrics
