package failover

import "context"

var contextCanceled = context.Canceled
