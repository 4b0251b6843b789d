package llm

// Usage counts the tokens of one model call. Input excludes cached tokens:
// providers that report a cache-inclusive prompt count have the cached part
// subtracted by their wire package.
type Usage struct {
	Input      int  `json:"input"`
	Output     int  `json:"output"`
	CacheRead  int  `json:"cacheRead"`
	CacheWrite int  `json:"cacheWrite"`
	Total      int  `json:"totalTokens"`
	Cost       Cost `json:"cost"`
}

// Cost is the price of a call in USD, by component.
type Cost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
	Total      float64 `json:"total"`
}

// Prices are a model's prices in USD per million tokens.
type Prices struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// ComputeTotal sets Total to the sum of the token counts.
func (u *Usage) ComputeTotal() {
	u.Total = u.Input + u.Output + u.CacheRead + u.CacheWrite
}

// ApplyPrices sets Cost from the token counts and the prices.
func (u *Usage) ApplyPrices(p Prices) {
	const perMillion = 1e6
	u.Cost.Input = p.Input * float64(u.Input) / perMillion
	u.Cost.Output = p.Output * float64(u.Output) / perMillion
	u.Cost.CacheRead = p.CacheRead * float64(u.CacheRead) / perMillion
	u.Cost.CacheWrite = p.CacheWrite * float64(u.CacheWrite) / perMillion
	u.Cost.Total = u.Cost.Input + u.Cost.Output + u.Cost.CacheRead + u.Cost.CacheWrite
}

// Add adds v's counts and costs to u.
func (u *Usage) Add(v Usage) {
	u.Input += v.Input
	u.Output += v.Output
	u.CacheRead += v.CacheRead
	u.CacheWrite += v.CacheWrite
	u.Total += v.Total
	u.Cost.Input += v.Cost.Input
	u.Cost.Output += v.Cost.Output
	u.Cost.CacheRead += v.Cost.CacheRead
	u.Cost.CacheWrite += v.Cost.CacheWrite
	u.Cost.Total += v.Cost.Total
}
